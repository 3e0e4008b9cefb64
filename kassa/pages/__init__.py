"""Customer-facing pages: hosted forms, 3-D Secure steps and the final redirect to the merchant."""
