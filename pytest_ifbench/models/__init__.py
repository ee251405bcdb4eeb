"""Model access: clients, providers, the response cache, background generation, the embedded model."""
