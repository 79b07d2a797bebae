/** One call of a fake activity, in the order the worker ran them. */
export interface ActivityCall {
  name: string;
  input: Record<string, unknown>;
}

type Fake = (input: never) => Promise<unknown>;

/** Fakes of some of the activities `A` (an interface of a workflow's contract file), each typed as the activity. */
export type Fakes<A> = { [K in keyof A]?: A[K] };

/**
 * Activities registered once per worker whose behaviour each test sets: `behave` replaces an activity's
 * implementation until `reset`, and every call is recorded in `calls`. Typed against the activities
 * interface the workflows declare, so a fake answers what the real activity answers.
 */
export function fakeActivities<A extends object>(defaults: Fakes<A>) {
  const calls: ActivityCall[] = [];
  let overrides: Partial<Record<keyof A, Fake>> = {};
  const fakes = defaults as Record<keyof A, Fake>;
  const activities = Object.fromEntries(
    (Object.keys(defaults) as Array<keyof A & string>).map((name) => [
      name,
      async (input: Record<string, unknown>) => {
        calls.push({ name, input });
        return (overrides[name] ?? fakes[name])(input as never);
      },
    ]),
  ) as Fakes<A>;
  return {
    activities,
    calls,
    /** The calls of one activity. */
    callsOf: (name: keyof A & string) => calls.filter((call) => call.name === name),
    behave<K extends keyof A & string>(name: K, fake: NonNullable<A[K]>): void {
      if (!(name in defaults)) throw new Error(`no fake activity named ${name}`);
      overrides[name] = fake as Fake;
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
