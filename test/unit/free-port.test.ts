import fs from 'node:fs';
import net from 'node:net';
import { freePort } from '../../src/temporal/dev-server';

/** The kernel's TCP sockets on 127.0.0.1 with `port` as their local port, by state (06 is TIME_WAIT). */
function statesOfLocalPort(port: number): string[] {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return fs
    .readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[1] === local)
    .map((fields) => fields[3]!);
}

async function bindable(port: number): Promise<boolean> {
  const server = net.createServer();
  const bound = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (bound) await new Promise<void>((resolve) => server.close(() => resolve()));
  return bound;
}

describe('freePort', () => {
  it('when it hands out a port, then nothing listens there, the kernel holds it in TIME_WAIT so that it picks it for no one else, and a server can still bind it by number', async () => {
    const ports = [await freePort(), await freePort(), await freePort()];
    expect(new Set(ports).size).toBe(3);
    for (const port of ports) {
      const states = statesOfLocalPort(port);
      expect({ port, listening: states.includes('0A'), timeWait: states.includes('06') }).toEqual({ port, listening: false, timeWait: true });
      expect(await bindable(port)).toBe(true);
    }
  });
});
