import { temporal } from '@temporalio/proto';
import { bearer, createTenant, startTestApi, type Tenant, type TestApi } from './support/harness';
import { recordHistory } from './support/record-history';
import { createBillingFixture, invoiceBody, type BillingFixture } from './support/billing-fixtures';
import { waitFor } from '../support/wait';
import { InvoiceNumberKey } from '../../workflows/search-attributes';

let api: TestApi;
let tenant: Tenant;
let fixture: BillingFixture;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api, 'invoice-recovery');
  fixture = await createBillingFixture(api, tenant);
});
afterAll(() => api.close());

const auth = () => bearer(tenant.systemToken);
const post = (id: string, action: string, body: object = {}) => api.http().post(`/invoices/${id}/${action}`).set(auth()).send(body);

async function createInvoice(): Promise<string> {
  const res = await api.http().post('/invoices').set(auth()).send(invoiceBody(fixture.contractPlanId)).expect(201);
  return res.body.data.id as string;
}

describe('invoice workflows end, and Postgres rebuilds them', () => {
  it('when a paid invoice outlives its undo window, then its workflow completes, and a later undo revives it from Postgres', async () => {
    const other = await createTenant(api, 'short-window');
    const otherFixture = await createBillingFixture(api, other);
    const system = bearer(other.systemToken);
    // The setting is whole days; 0 leaves the workflow open for about a second.
    await api.http().put('/organisation/settings').set(system).send({ invoiceUndoWindowDays: 0 }).expect(200);
    const created = await api.http().post('/invoices').set(system).send(invoiceBody(otherFixture.contractPlanId)).expect(201);
    const id = created.body.data.id as string;
    await api.http().post(`/invoices/${id}/mark-paid`).set(system).send({ paidDate: '2026-11-15' }).expect(200);

    const handle = api.temporal.client.workflow.getHandle(`invoice:${id}`);
    const status = await waitFor(async () => {
      const name = (await handle.describe()).status.name;
      return name === 'COMPLETED' ? name : undefined;
    }, 20_000);
    expect(status).toBe('COMPLETED');

    const undone = await api.http().post(`/fsm/invoice/${id}/undo`).set(system).send({});
    expect(undone.status).toBe(200);
    expect(undone.body.data.status).toBe('sent');
    const revived = await handle.describe();
    expect(revived.status.name).toBe('RUNNING');
    // The new run is found by the invoice's number, as the first was from its raise on.
    expect(revived.typedSearchAttributes.get(InvoiceNumberKey)).toBe(created.body.data.number ?? (await api.db('invoices').where({ id }).first()).number);
    expect(await api.db('payments').where({ invoice_id: id }).whereNull('deleted_at').count({ n: '*' })).toEqual([{ n: '0' }]);
  });

  it('when a sent invoice\'s workflow is reset to before its raise, then the next transition acts on the state Postgres records', async () => {
    const id = await createInvoice();
    await post(id, 'raise').expect(200);
    await post(id, 'send').expect(200);

    const workflowId = `invoice:${id}`;
    const { namespace, client } = api.temporal;
    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    const firstTask = history.events!.find((event) => event.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)!;
    await client.workflowService.resetWorkflowExecution({
      namespace,
      workflowExecution: { workflowId },
      reason: 'operator reset in a test',
      workflowTaskFinishEventId: firstTask.eventId,
      requestId: `reset-${id}`,
    });
    // The reset run remembers a draft; Postgres says sent.
    const paid = await post(id, 'mark-paid', { paidDate: '2026-11-20' });
    expect(paid.status).toBe(200);
    expect(paid.body.data.status).toBe('paid');
    expect(await api.db('payments').where({ invoice_id: id }).count({ n: '*' })).toEqual([{ n: '1' }]);
    const transitions = await api.db('invoice_transitions').where({ invoice_id: id }).orderBy('seq').select('seq', 'step');
    expect(transitions.map((t) => [t.seq, t.step])).toEqual([
      [1, 'raise'],
      [2, 'send'],
      [3, 'pay'],
    ]);

    const undone = await api.http().post(`/fsm/invoice/${id}/undo`).set(auth()).send({});
    expect(undone.status).toBe(200);
    expect(undone.body.data.status).toBe('sent');
  });

  it('when a sent invoice\'s workflow is reset to an earlier point, then a cancel and an undo act on the transitions Postgres holds, never on another step under the same number', async () => {
    const { namespace, client } = api.temporal;
    const { EVENT_TYPE_WORKFLOW_TASK_COMPLETED: TASK_COMPLETED, EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED: UPDATE_COMPLETED } = temporal.api.enums.v1.EventType;
    /** The first workflow task completed after the workflow's last Update completed: a point that remembers it. */
    const taskAfterLastUpdate = (workflowId: string) =>
      waitFor(async () => {
        const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events!;
        const updated = Number(events.filter((event) => event.eventType === UPDATE_COMPLETED).at(-1)!.eventId);
        return events.find((event) => event.eventType === TASK_COMPLETED && Number(event.eventId) > updated)?.eventId ?? undefined;
      }, 10_000);
    const resetTo = (workflowId: string, eventId: temporal.api.history.v1.IHistoryEvent['eventId']) =>
      client.workflowService.resetWorkflowExecution({
        namespace,
        workflowExecution: { workflowId },
        reason: 'operator reset in a test, nothing reapplied',
        workflowTaskFinishEventId: eventId,
        requestId: `reset-${workflowId}`,
        resetReapplyType: temporal.api.enums.v1.ResetReapplyType.RESET_REAPPLY_TYPE_NONE,
      });
    const standing = async (id: string) => (await api.db('invoice_transitions').where({ invoice_id: id }).whereNull('undone_at').orderBy('seq').select('seq', 'step')).map((t) => `${t.seq} ${t.step}`);

    // Reset to its start, the run's next number is one Postgres gave the raise: the cancel is refused there, reloads, and cancels.
    const first = await createInvoice();
    await post(first, 'raise').expect(200);
    await post(first, 'send').expect(200);
    const started = (await client.workflow.getHandle(`invoice:${first}`).fetchHistory()).events!.find((event) => event.eventType === TASK_COMPLETED)!;
    await resetTo(`invoice:${first}`, started.eventId);
    const cancelled = await api.http().put(`/invoices/${first}`).set(auth()).send({ status: 'cancelled' });
    expect([cancelled.status, cancelled.body.data?.status]).toEqual([200, 'cancelled']);
    expect((await api.http().get(`/invoices/${first}`).set(auth()).expect(200)).body.data.status).toBe('cancelled');
    expect(await standing(first)).toEqual(['1 raise', '2 send', '3 cancel']);

    // Reset to after the raise, the run remembers the raise as latest: the undo reverts the send Postgres holds last.
    const second = await createInvoice();
    await post(second, 'raise').expect(200);
    const afterRaise = await taskAfterLastUpdate(`invoice:${second}`);
    await post(second, 'send').expect(200);
    await resetTo(`invoice:${second}`, afterRaise);
    const undone = await api.http().post(`/fsm/invoice/${second}/undo`).set(auth()).send({});
    expect([undone.status, undone.body.data?.status, undone.body.errors]).toEqual([200, 'raised', undefined]);
    expect(await standing(second)).toEqual(['1 raise']);
    expect((await api.http().get(`/fsm/invoice/${second}/actions`).set(auth()).expect(200)).body.data.state).toBe('raised');
    const paid = await post(second, 'mark-paid', { paidDate: '2026-11-20' });
    expect([paid.status, paid.body.data?.status]).toEqual([200, 'paid']);
    expect((await api.db('invoices').where({ id: second }).first()).due_date).not.toBeNull();
  });

  /**
   * Raises and sends an invoice, undoes the send, then resets its workflow to a point of the send, nothing
   * reapplied: `completed`, the first task after the send's Update completed (the run remembers `sent`);
   * `accepted`, the last task before it (the run remembers `raised`, with the send's number still free).
   * Postgres says `raised` either way; mark-paid then answers, and the invoice's standing transitions.
   */
  async function markPaidAfterForgottenSend(point: 'completed' | 'accepted') {
    const id = await createInvoice();
    await post(id, 'raise').expect(200);
    await post(id, 'send').expect(200);
    const workflowId = `invoice:${id}`;
    const { namespace, client } = api.temporal;
    const { EVENT_TYPE_WORKFLOW_TASK_COMPLETED: TASK_COMPLETED, EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED: UPDATE_COMPLETED } = temporal.api.enums.v1.EventType;
    const resetPoint = await waitFor(async () => {
      const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events!;
      const sent = Number(events.filter((event) => event.eventType === UPDATE_COMPLETED).at(-1)!.eventId);
      const tasks = events.filter((event) => event.eventType === TASK_COMPLETED);
      return point === 'completed' ? tasks.find((event) => Number(event.eventId) > sent)?.eventId ?? undefined : tasks.filter((event) => Number(event.eventId) < sent).at(-1)?.eventId ?? undefined;
    }, 10_000);
    await api.http().post(`/fsm/invoice/${id}/undo`).set(auth()).send({}).expect(200);
    await client.workflowService.resetWorkflowExecution({
      namespace,
      workflowExecution: { workflowId },
      reason: 'operator reset in a test, nothing reapplied',
      workflowTaskFinishEventId: resetPoint,
      requestId: `reset-${point}-${id}`,
      resetReapplyType: temporal.api.enums.v1.ResetReapplyType.RESET_REAPPLY_TYPE_NONE,
    });
    const paid = await post(id, 'mark-paid', { paidDate: '2026-11-20' });
    const transitions = await api.db('invoice_transitions').where({ invoice_id: id }).whereNull('undone_at').orderBy('seq').select('seq', 'step');
    const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events!;
    const snapshots = events.filter((event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'invoiceSnapshot');
    return { id, workflowId, paid, standing: transitions.map((t) => [t.seq, t.step]), snapshots: snapshots.length };
  }

  it('when an undone send is forgotten by a reset, then the next step is refused by Postgres and the workflow reloads its state from there', async () => {
    const { paid, standing, snapshots, workflowId } = await markPaidAfterForgottenSend('completed');
    expect([paid.status, paid.body.data?.status]).toEqual([200, 'paid']);
    // Seq 3 went to the refused pay (planned from `sent`), and numbers only grow; the refusal made the
    // workflow read Postgres once, then send and pay.
    expect(standing).toEqual([
      [1, 'raise'],
      [4, 'send'],
      [5, 'pay'],
    ]);
    expect(snapshots).toBe(1);
    await recordHistory(api, workflowId, 'invoice-reset-refused-step-reloads');
  });

  it('when a reset forgets a send that was done and undone, then the send planned under its number is refused, and planned again under the next', async () => {
    const { paid, standing, snapshots } = await markPaidAfterForgottenSend('accepted');
    expect([paid.status, paid.body.data?.status, paid.body.errors]).toEqual([200, 'paid', undefined]);
    // The run remembered `raised` and number 2 free; Postgres gave 2 to the undone send.
    expect(standing).toEqual([
      [1, 'raise'],
      [3, 'send'],
      [4, 'pay'],
    ]);
    expect(snapshots).toBe(1);
  });
});
