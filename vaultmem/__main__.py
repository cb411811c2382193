"""`python -m vaultmem` runs the CLI."""

from vaultmem.entry import main

main()
