import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError } from '../config';

/** The Prometheus text format, as a scrape answers it. */
export interface MetricsText {
  contentType: string;
  body: string;
}

export interface MetricsServer {
  /** Where Prometheus scrapes: `http://host:port/metrics`. */
  url: string;
  port: number;
  close: () => Promise<void>;
}

/** The one path served; a query string (Prometheus's `params`) is allowed, any other spelling is not. */
export const METRICS_PATH = '/metrics';

function answer(res: http.ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', ...headers });
  res.end(text);
}

/**
 * A plain HTTP server of its own for Prometheus, apart from the API's port: `GET /metrics` (and HEAD)
 * answers `render()`, every other path 404 and every other method 405. `setting` names the port's
 * variable in the error raised when the address is taken.
 */
export async function startMetricsServer(options: {
  host: string;
  port: number;
  render: () => Promise<MetricsText>;
  setting: string;
  onError?: (error: unknown) => void;
}): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?', 1)[0];
    if (path !== METRICS_PATH) return answer(res, 404, 'Not found: Prometheus metrics are at /metrics\n');
    if (req.method !== 'GET' && req.method !== 'HEAD') return answer(res, 405, 'Method not allowed\n', { Allow: 'GET, HEAD' });
    options.render().then(
      ({ contentType, body }) => {
        res.writeHead(200, { 'Content-Type': contentType, 'Cache-Control': 'no-store', 'Content-Length': Buffer.byteLength(body) });
        res.end(req.method === 'HEAD' ? undefined : body);
      },
      (error: unknown) => {
        options.onError?.(error);
        answer(res, 500, 'The metrics could not be collected\n');
      },
    );
  });
  // A scrape is one short request; a connection left idle is not kept for long.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE' || error.code === 'EADDRNOTAVAIL' || error.code === 'EACCES') {
        reject(new ConfigError(`Invalid configuration:\n  ${options.setting}: cannot listen on ${options.host}:${options.port} (${error.code}); choose another port, or 0 to turn the metrics off`));
      } else {
        reject(error);
      }
    });
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}${METRICS_PATH}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
