"""`python -m vaultmem` runs the CLI."""

from vaultmem.cli import main

main()
