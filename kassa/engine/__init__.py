"""Running work: the job workers, the consumer loop they and the callback dispatcher share, callback
delivery with its SSRF guard, and the scheduler of time-driven work."""
