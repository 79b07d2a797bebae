// Every workflow the worker runs; this file is the worker's workflowsPath.
export {};
