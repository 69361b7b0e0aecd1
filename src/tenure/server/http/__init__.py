"""The HTTP front: the routes, their request and reply models, problems and the OpenAPI document."""
