"""rclpy nodes and message conversion only: thin adapters over the pure modules."""
