"""Processing: the job workers, the processor interface and the sandbox acquirer."""
