"""`python -m denpex_kb` runs the CLI (handy with PYTHONPATH pointing at a checkout)."""

from .cli import main

main(prog_name="denpex-kb")  # the same name, and completion variable, as the installed command
