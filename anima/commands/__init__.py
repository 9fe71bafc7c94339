"""The thin command layer: parse arguments, call the domain, format output."""
