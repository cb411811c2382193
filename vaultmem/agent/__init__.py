"""The agent loop: context surfaced into prompts, hooks, and what sessions leave behind."""
