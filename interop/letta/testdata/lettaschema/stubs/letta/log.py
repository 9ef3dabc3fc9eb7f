"""Stub of letta.log: the standard library's loggers."""
import logging


def get_logger(name=None):
    return logging.getLogger(name or "letta")
