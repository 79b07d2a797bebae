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
