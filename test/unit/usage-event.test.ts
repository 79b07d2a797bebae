import { parseUsageEvent, usageEventInput } from '../../src/modules/usage/usage.schemas';

const valid = { CustomerEntityId: 'ent_1', metric: 'api_calls', value: 3, timestamp: '2026-11-01T10:00:00Z' };

describe('parseUsageEvent', () => {
  it('when every required field is present, then the event is accepted with a decimal string value', () => {
    const result = parseUsageEvent({ ...valid, value: 2.5, eventId: 'e-1', metadata: { region: 'eu' } });
    expect(result).toEqual({
      ok: true,
      event: {
        customerEntityId: 'ent_1',
        metric: 'api_calls',
        value: '2.5',
        timestamp: new Date('2026-11-01T10:00:00Z'),
        metadata: { region: 'eu' },
        eventId: 'e-1',
        jobId: null,
      },
    });
  });

  it('when the value is a numeric string, then it is kept exactly', () => {
    const result = parseUsageEvent({ ...valid, value: '0.1000000001' });
    expect(result.ok && result.event.value).toBe('0.1000000001');
  });

  it('when a timestamp carries an offset, then it is read in that zone', () => {
    const result = parseUsageEvent({ ...valid, timestamp: '2026-11-01T12:00:00+02:00' });
    expect(result.ok && result.event.timestamp.toISOString()).toBe('2026-11-01T10:00:00.000Z');
  });

  it('when JobId or jobId is given, then either fills the job, the lower-case spelling first', () => {
    expect(parseUsageEvent({ ...valid, JobId: 'upper' })).toMatchObject({ ok: true, event: { jobId: 'upper' } });
    expect(parseUsageEvent({ ...valid, jobId: 'lower', JobId: 'upper' })).toMatchObject({ ok: true, event: { jobId: 'lower' } });
  });

  it.each([
    ['CustomerEntityId is missing', { ...valid, CustomerEntityId: undefined }, 'CustomerEntityId is required'],
    ['metric is empty', { ...valid, metric: '' }, 'metric must not be blank'],
    ['metric is blank', { ...valid, metric: ' \t' }, 'metric must not be blank'],
    ['metric is not a string', { ...valid, metric: 7 }, 'metric Invalid input: expected string, received number'],
    ['value is missing', { ...valid, value: undefined }, 'value is required'],
    ['value is null', { ...valid, value: null }, 'value must be a decimal number with at most 20 digits before the point and 10 after it'],
    ['value is not numeric', { ...valid, value: 'ten' }, 'value must be a decimal number with at most 20 digits before the point and 10 after it'],
    ['value has an exponent', { ...valid, value: '1e3' }, 'value must be a decimal number with at most 20 digits before the point and 10 after it'],
    ['value is a boolean', { ...valid, value: true }, 'value must be a decimal number with at most 20 digits before the point and 10 after it'],
    ['timestamp is missing', { ...valid, timestamp: undefined }, 'timestamp is required'],
    ['timestamp is free text', { ...valid, timestamp: 'yesterday' }, 'timestamp must be an ISO 8601 date-time with seconds and a zone (Z or ±hh:mm), on a day the calendar has'],
    ['timestamp has no zone', { ...valid, timestamp: '2026-11-01T10:00:00' }, 'timestamp must be an ISO 8601 date-time with seconds and a zone (Z or ±hh:mm), on a day the calendar has'],
    ['timestamp is a bare date', { ...valid, timestamp: '2026-11-01' }, 'timestamp must be an ISO 8601 date-time with seconds and a zone (Z or ±hh:mm), on a day the calendar has'],
    ['the day does not exist', { ...valid, timestamp: '2026-02-29T00:00:00Z' }, 'timestamp must be an ISO 8601 date-time with seconds and a zone (Z or ±hh:mm), on a day the calendar has'],
    ['the month does not exist', { ...valid, timestamp: '2026-13-01T00:00:00Z' }, 'timestamp must be an ISO 8601 date-time with seconds and a zone (Z or ±hh:mm), on a day the calendar has'],
    ['metadata is an array', { ...valid, metadata: [1] }, 'metadata Invalid input: expected record, received array'],
    ['eventId is too long', { ...valid, eventId: 'x'.repeat(256) }, 'eventId must be at most 255 characters'],
  ])('when %s, then it is rejected', (_label, raw, error) => {
    expect(parseUsageEvent(raw)).toEqual({ ok: false, error });
  });

  it('when an event is judged, then it is judged by the schema of an event sent alone: the batch accepts exactly what POST /events accepts', () => {
    const samples: unknown[] = [valid, { ...valid, value: '1e3' }, { ...valid, value: 1e3 }, { ...valid, value: '+0.5' }, { ...valid, timestamp: '2026-11-01T10:00Z' }, { ...valid, eventId: '' }, { ...valid, metadata: null }];
    for (const raw of samples) expect({ raw, ok: parseUsageEvent(raw).ok }).toEqual({ raw, ok: usageEventInput.safeParse(raw).success });
  });

  it('when eventId or jobId is empty, then the event has none: an empty id never makes another event its duplicate', () => {
    const parsed = parseUsageEvent({ ...valid, eventId: '', jobId: '' });
    expect(parsed.ok && { eventId: parsed.event.eventId, jobId: parsed.event.jobId }).toEqual({ eventId: null, jobId: null });
  });

  it('when the event is not an object, then it is rejected', () => {
    expect(parseUsageEvent([valid])).toEqual({ ok: false, error: 'event must be an object' });
    expect(parseUsageEvent(null)).toEqual({ ok: false, error: 'event must be an object' });
  });

  it('when a leap day exists, then it is accepted', () => {
    expect(parseUsageEvent({ ...valid, timestamp: '2028-02-29T00:00:00Z' }).ok).toBe(true);
  });

  it('when an event has a property an event does not have, whatever its value, then it is rejected naming each', () => {
    expect(parseUsageEvent({ ...valid, foo: { a: 1 }, bar: 1 })).toEqual({ ok: false, error: 'foo is not a property this request takes; bar is not a property this request takes' });
    expect(parseUsageEvent({ ...valid, foo: null })).toEqual({ ok: false, error: 'foo is not a property this request takes' });
  });
});
