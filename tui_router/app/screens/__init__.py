"""Modal screens (confirm, option picker, prompts, help) and the replay screen."""
