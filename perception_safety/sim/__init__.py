"""Episode runner and scenario backends: builtin (embedded default) and CARLA (real client)."""
