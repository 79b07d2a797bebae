/**
 * `WEBHOOK_ALLOWED_HOSTS`: the destinations an operator lets webhooks reach although they are not public
 * (docs/security.md). Read by the configuration when it is loaded, and by the webhooks' destination policy.
 */

/** The port a URL reaches: its own, else its scheme's. */
const portOf = (url: URL) => Number(url.port || (url.protocol === 'https:' ? 443 : 80));

/** `host:port` as the allow-list holds it: the URL parser's host (lower case, IPv6 in brackets, IPv4 normalised). */
export const destinationKey = (url: URL) => `${url.hostname}:${portOf(url)}`;

/**
 * One `WEBHOOK_ALLOWED_HOSTS` entry, `host` or `host:port` (IPv6 in brackets: `[fd00::1]:8443`), as its
 * key; a bare host means port 443, https's. Answers why the entry is not one, otherwise.
 */
function parseAllowedEntry(entry: string): { key: string } | { problem: string } {
  const invalid = { problem: `"${entry}" is not host or host:port (no scheme, path, credentials or wildcard; IPv6 in brackets)` };
  if (/[\s/?#@*\\]/.test(entry) || entry.endsWith(':')) return invalid;
  let parsed: URL;
  try {
    parsed = new URL(`https://${entry}`);
  } catch {
    return invalid;
  }
  if (parsed.pathname !== '/' || parsed.search || parsed.hash || parsed.username || parsed.password) return invalid;
  if (parsed.port === '0') return { problem: `"${entry}": the port must be 1 to 65535` };
  return { key: destinationKey(parsed) };
}

/** The entries of `WEBHOOK_ALLOWED_HOSTS` (comma-separated), with what is wrong with any of them. */
export function parseAllowedDestinations(text: string): { keys: string[]; problems: string[] } {
  const keys: string[] = [];
  const problems: string[] = [];
  for (const entry of text.split(',').map((part) => part.trim()).filter(Boolean)) {
    const parsed = parseAllowedEntry(entry);
    if ('key' in parsed) keys.push(parsed.key);
    else problems.push(parsed.problem);
  }
  return { keys, problems };
}

