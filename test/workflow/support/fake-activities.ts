/** One call of a fake activity, in the order the worker ran them. */
export interface ActivityCall {
  name: string;
  input: Record<string, unknown>;
}

type Fake = (input: Record<string, unknown>) => Promise<unknown>;

/**
 * Activities registered once per worker whose behaviour each test sets: `behave` replaces an activity's
 * implementation until `reset`, and every call is recorded in `calls`.
 */
export function fakeActivities(defaults: Record<string, Fake>) {
  const calls: ActivityCall[] = [];
  let overrides: Record<string, Fake> = {};
  const activities = Object.fromEntries(
    Object.keys(defaults).map((name) => [
      name,
      async (input: Record<string, unknown>) => {
        calls.push({ name, input });
        return (overrides[name] ?? defaults[name]!)(input);
      },
    ]),
  );
  return {
    activities,
    calls,
    /** The calls of one activity. */
    callsOf: (name: string) => calls.filter((call) => call.name === name),
    behave(name: string, fake: Fake): void {
      if (!(name in defaults)) throw new Error(`no fake activity named ${name}`);
      overrides[name] = fake;
    },
    reset(): void {
      calls.length = 0;
      overrides = {};
    },
  };
}

/** A promise and its resolver: lets an activity wait until the test says go. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((settle) => (resolve = settle));
  return { promise, resolve };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
