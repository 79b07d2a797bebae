import { createAccessTokens } from '../../src/modules/auth/access-tokens';

const subject = { subjectId: 'app_1', organisationId: 'org_1', role: 'SystemUser' as const, version: 3 };

describe('access tokens', () => {
  afterEach(() => jest.useRealTimers());

  it('answers the same claims for a token verified again, and nothing for one that is not its own', async () => {
    const tokens = createAccessTokens('a-secret-of-at-least-thirty-two-chars', 900);
    const { token } = await tokens.issue(subject);
    const first = await tokens.verify(token);
    expect(first).toMatchObject({ organisationId: 'org_1', subjectId: 'app_1', role: 'SystemUser', tokenVersion: 3 });
    expect(await tokens.verify(token)).toEqual(first);
    const [header, payload, signature] = token.split('.');
    const flipped = `${signature!.startsWith('A') ? 'B' : 'A'}${signature!.slice(1)}`;
    expect(await tokens.verify(`${header}.${payload}.${flipped}`)).toBeNull();
    expect(await createAccessTokens('another-secret-of-thirty-two-chars!!', 900).verify(token)).toBeNull();
  });

  it('refuses a token once it has expired, though it was verified while it was valid', async () => {
    jest.useFakeTimers({ now: new Date('2026-03-01T10:00:00Z'), doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const tokens = createAccessTokens('a-secret-of-at-least-thirty-two-chars', 60);
    const { token } = await tokens.issue(subject);
    expect(await tokens.verify(token)).not.toBeNull();
    jest.setSystemTime(new Date('2026-03-01T10:00:59Z'));
    expect(await tokens.verify(token)).not.toBeNull();
    jest.setSystemTime(new Date('2026-03-01T10:01:00Z'));
    expect(await tokens.verify(token)).toBeNull();
    expect(await tokens.verify(token)).toBeNull();
  });

  it('hands out claims that a caller cannot change for the next request', async () => {
    const tokens = createAccessTokens('a-secret-of-at-least-thirty-two-chars', 900);
    const { token } = await tokens.issue(subject);
    const auth = (await tokens.verify(token))!;
    expect(() => Object.assign(auth, { organisationId: 'org_2' })).toThrow(TypeError);
    expect((await tokens.verify(token))!.organisationId).toBe('org_1');
  });
});
