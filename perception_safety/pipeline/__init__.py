"""Application layer: the evaluate pipeline (map per bag, reduce) and the demo; used by commands/."""
