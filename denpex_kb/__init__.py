"""denpex-kb: knowledge base, rule pack and log matcher for DeepSpeed failures."""

__version__ = "0.1.0"
