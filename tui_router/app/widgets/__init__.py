"""The console's panes; each renders a TurnView or the catalog and holds no routing logic."""
