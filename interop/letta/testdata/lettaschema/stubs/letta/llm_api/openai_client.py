"""Stub of letta.llm_api.openai_client (the OpenAI client): the model-name
predicates letta.schemas.llm_config's validators import, copied from
letta/llm_api/openai_client.py."""


def is_openai_reasoning_model(model: str) -> bool:
    """Utility function to check if the model is a 'reasoner'"""

    # NOTE: needs to be updated with new model releases
    is_reasoning = model.startswith("o1") or model.startswith("o3") or model.startswith("o4") or model.startswith("gpt-5")
    return is_reasoning


def does_not_support_minimal_reasoning(model: str) -> bool:
    """Check if the model does not support minimal reasoning effort.

    Currently, models that contain codex don't support minimal reasoning.
    """
    return "codex" in model.lower()


def supports_none_reasoning_effort(model: str) -> bool:
    """Check if the model supports 'none' reasoning effort.

    Currently, GPT-5.1, GPT-5.2, GPT-5.3, and GPT-5.4 models support the 'none' reasoning effort level.
    """
    return model.startswith("gpt-5.1") or model.startswith("gpt-5.2") or model.startswith("gpt-5.3") or model.startswith("gpt-5.4")
