"""What work costs: hosted models' prices, this machine's measured speed per model, and the usage counters
a run reports."""
