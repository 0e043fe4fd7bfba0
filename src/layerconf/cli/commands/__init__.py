"""The layerconf commands, one module each: its `Command` records in ``COMMANDS``."""
