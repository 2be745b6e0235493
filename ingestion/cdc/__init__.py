"""The Debezium event model, ordering rules and TICKIT table contracts (pure Python)."""
