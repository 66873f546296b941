from zerolint.cli import entry

entry()
