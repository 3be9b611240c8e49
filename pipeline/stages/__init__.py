"""The build: stages that turn a variant's game into table rows, and the plan that runs them."""
