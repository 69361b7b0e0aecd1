"""The domain core: frozen models and pure decision functions. No I/O here."""
