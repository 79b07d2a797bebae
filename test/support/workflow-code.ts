import path from 'node:path';

const WORKFLOWS_PATH = path.resolve(__dirname, '../../workflows');

/**
 * The workflow code a test's in-process worker runs: the bundle the integration suite's setup made once for
 * every worker of the run (WORKFLOW_BUNDLE_PATH), else workflows/ itself, which the worker bundles on its
 * own (a file run alone, or a project without that setup).
 */
export function workflowCode(): { workflowBundle: { codePath: string } } | { workflowsPath: string } {
  const prebuilt = process.env.WORKFLOW_BUNDLE_PATH;
  return prebuilt ? { workflowBundle: { codePath: prebuilt } } : { workflowsPath: WORKFLOWS_PATH };
}
