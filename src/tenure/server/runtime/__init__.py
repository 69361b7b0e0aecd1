"""Where the server runs the service's calls: the executor, long-poll waiters and the event bell."""
