"""judge: an LLM-as-judge quality gate for AI agents."""

__version__ = "0.1.0"
