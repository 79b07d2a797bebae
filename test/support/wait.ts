/** Polls `probe` until it answers something (not undefined), or fails after `timeoutMs`. */
export async function waitFor<T>(probe: () => T | undefined | Promise<T | undefined>, timeoutMs: number, intervalMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** A request that is expected to wait (on a lock): whether it has answered, and its answer once it has. */
export function watched<T>(request: PromiseLike<T>): { answered: () => boolean; answer: Promise<T> } {
  let done = false;
  const answer = Promise.resolve(request).then((value) => {
    done = true;
    return value;
  });
  return { answered: () => done, answer };
}
