"""Stub of letta.otel.tracing: no tracing."""


def trace_method(func):
    return func


def log_attributes(*args, **kwargs):
    pass


def log_event(*args, **kwargs):
    pass
