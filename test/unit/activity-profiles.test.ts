import fs from 'node:fs';
import path from 'node:path';
import { BUSINESS_FAILURE_TYPES } from '../../src/domain/errors';
import {
  ACTIVITY_PROFILES,
  contractWorkflowId,
  LOCAL_ACTIVITY_PROFILES,
  exportWorkflowId,
  invoiceWorkflowId,
  revenueSyncWorkflowId,
  searchAttributes,
  usageBatchWorkflowId,
  usageChunkWorkflowId,
} from '../../workflows/shared';
import { ContractIdKey, CustomerIdKey, OrganisationIdKey } from '../../workflows/search-attributes';

const WORKFLOWS = path.resolve(__dirname, '../../workflows');

function workflowFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return workflowFiles(file);
    return entry.name.endsWith('.ts') ? [file] : [];
  });
}

/** The argument text of every `proxyActivities<...>(...)` call in a source, generics skipped. */
function proxyActivitiesArguments(source: string): string[] {
  const found: string[] = [];
  for (const match of source.matchAll(/\bproxy(?:Local)?Activities\b/g)) {
    let at = match.index + match[0].length;
    while (/\s/.test(source[at] ?? '')) at += 1;
    if (source[at] === '<') {
      for (let depth = 0; at < source.length; at += 1) {
        if (source[at] === '<') depth += 1;
        if (source[at] === '>' && --depth === 0) break;
      }
      at += 1;
    }
    while (/\s/.test(source[at] ?? '')) at += 1;
    if (source[at] !== '(') continue; // an import or a mention, not a call
    const start = at + 1;
    for (let depth = 0; at < source.length; at += 1) {
      if (source[at] === '(') depth += 1;
      if (source[at] === ')' && --depth === 0) break;
    }
    found.push(source.slice(start, at).trim());
  }
  return found;
}

describe('activity profiles', () => {
  it.each([...Object.entries(ACTIVITY_PROFILES), ...Object.entries(LOCAL_ACTIVITY_PROFILES).map(([name, profile]) => [`${name} (local)`, profile] as const)])('when profile %s is used, then its retries are bounded and never retry a business failure', (_name, profile) => {
    expect(profile.startToCloseTimeout ?? profile.scheduleToCloseTimeout).toBeDefined();
    const bounded = (profile.retry?.maximumAttempts ?? 0) > 0 || profile.scheduleToCloseTimeout !== undefined;
    expect(bounded).toBe(true);
    expect(profile.retry?.nonRetryableErrorTypes).toEqual(expect.arrayContaining(BUSINESS_FAILURE_TYPES));
  });

  it('when any workflow file proxies activities, then it does so through a named profile, never inline options', () => {
    const calls = workflowFiles(WORKFLOWS).flatMap((file) =>
      proxyActivitiesArguments(fs.readFileSync(file, 'utf8')).map((argument) => ({ file: path.relative(WORKFLOWS, file), argument })),
    );

    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) {
      // Either a profile by name, or the one a workflow names to activitiesOf / localActivitiesOf (typed as a profile's name).
      const [, family, profile] = /^(LOCAL_ACTIVITY_PROFILES|ACTIVITY_PROFILES)(?:\.(\w+)|\[(profile)\]),?$/.exec(call.argument)?.filter(Boolean) ?? [];
      const profiles = family === 'LOCAL_ACTIVITY_PROFILES' ? LOCAL_ACTIVITY_PROFILES : ACTIVITY_PROFILES;
      const known = profile === 'profile' || (profile !== undefined && Object.hasOwn(profiles, profile));
      expect({ ...call, profile: known ? 'known' : 'unknown' }).toEqual({ ...call, profile: 'known' });
      expect(call.file).toBe('shared.ts');
    }
  });

  it('when the argument parser meets inline options, then it reports them', () => {
    expect(proxyActivitiesArguments("const a = proxyActivities<Pick<A, 'x'>>({ startToCloseTimeout: '1 minute' });")).toEqual(["{ startToCloseTimeout: '1 minute' }"]);
    expect(proxyActivitiesArguments("import { proxyActivities } from '@temporalio/workflow';")).toEqual([]);
    expect(proxyActivitiesArguments("const b = proxyLocalActivities<A>({ startToCloseTimeout: '1 minute' });")).toEqual(["{ startToCloseTimeout: '1 minute' }"]);
  });
});

describe('workflow ids and search attributes', () => {
  it('when ids are built, then they keep the formats running workflows and recorded histories carry', () => {
    expect([
      invoiceWorkflowId('inv_1'),
      contractWorkflowId('ctr_1'),
      usageBatchWorkflowId('bat_1'),
      usageChunkWorkflowId('bat_1', 2),
      exportWorkflowId('job_1'),
      revenueSyncWorkflowId('org_1', 'itm_1'),
    ]).toEqual(['invoice:inv_1', 'contract:ctr_1', 'usage-batch:bat_1', 'usage-batch:bat_1:chunk:2', 'export:job_1', 'revenue-sync:org_1:itm_1']);
  });

  it('when owners are given, then each present one becomes a search attribute and absent ones are left out', () => {
    expect(searchAttributes({ organisationId: 'org_1', customerId: 'cus_1', contractId: 'ctr_1' }).typedSearchAttributes).toEqual([
      { key: OrganisationIdKey, value: 'org_1' },
      { key: CustomerIdKey, value: 'cus_1' },
      { key: ContractIdKey, value: 'ctr_1' },
    ]);
    expect(searchAttributes({ organisationId: 'org_1', customerId: null }).typedSearchAttributes).toEqual([{ key: OrganisationIdKey, value: 'org_1' }]);
  });
});
