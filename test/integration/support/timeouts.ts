// Integration tests wait on real servers, workflow bundling and worker restarts.
jest.setTimeout(180_000);
