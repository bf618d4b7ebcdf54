"""The version, in one place: pyproject.toml reads it from here (dynamic), and so does the code."""

__version__ = "0.1.0"
