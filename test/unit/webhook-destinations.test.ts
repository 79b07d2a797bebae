import { ConfigError, loadConfig } from '../../src/config';
import { destinationPolicy, publicReason, REFUSED_NOT_HTTPS, REFUSED_NOT_PUBLIC, urlProblem } from '../../src/modules/webhooks/destination';
import { parseAllowedDestinations } from '../../src/security/allowed-destinations';

describe('webhook destinations', () => {
  it('when WEBHOOK_ALLOWED_HOSTS lists entries, then each is host:port, a bare host meaning port 443', () => {
    expect(parseAllowedDestinations(' hooks.internal, Hooks.Example:8443 ,10.0.0.5:80,[FD00::1]:9000,,0x7f.1:3000')).toEqual({
      keys: ['hooks.internal:443', 'hooks.example:8443', '10.0.0.5:80', '[fd00::1]:9000', '127.0.0.1:3000'],
      problems: [],
    });
    expect(parseAllowedDestinations('https://hooks.internal,hooks.internal/in,*.corp,hooks.internal:,hooks.internal:0,hooks.internal:70000,fd00::1,user@hooks.internal').problems).toEqual([
      '"https://hooks.internal" is not host or host:port (no scheme, path, credentials or wildcard; IPv6 in brackets)',
      '"hooks.internal/in" is not host or host:port (no scheme, path, credentials or wildcard; IPv6 in brackets)',
      '"*.corp" is not host or host:port (no scheme, path, credentials or wildcard; IPv6 in brackets)',
      '"hooks.internal:" is not host or host:port (no scheme, path, credentials or wildcard; IPv6 in brackets)',
      '"hooks.internal:0": the port must be 1 to 65535',
      '"hooks.internal:70000" is not host or host:port (no scheme, path, credentials or wildcard; IPv6 in brackets)',
      '"fd00::1" is not host or host:port (no scheme, path, credentials or wildcard; IPv6 in brackets)',
      '"user@hooks.internal" is not host or host:port (no scheme, path, credentials or wildcard; IPv6 in brackets)',
    ]);
  });

  it('when WEBHOOK_ALLOWED_HOSTS has an entry that is not host or host:port, then the configuration does not load, naming the variable', () => {
    expect(loadConfig({ WEBHOOK_ALLOWED_HOSTS: 'hooks.internal:8443' }).WEBHOOK_ALLOWED_HOSTS).toBe('hooks.internal:8443');
    expect(() => loadConfig({ WEBHOOK_ALLOWED_HOSTS: 'hooks.internal:8443,https://hooks.internal/in' })).toThrow(ConfigError);
    expect(() => loadConfig({ WEBHOOK_ALLOWED_HOSTS: 'hooks.internal:8443,https://hooks.internal/in' })).toThrow(
      'Invalid configuration:\n  WEBHOOK_ALLOWED_HOSTS: "https://hooks.internal/in" is not host or host:port (no scheme, path, credentials or wildcard; IPv6 in brackets)',
    );
  });

  it('when a host:port is allowed, then only that host on that port is exempt in production', () => {
    const policy = destinationPolicy({ NODE_ENV: 'production', WEBHOOK_ALLOWED_HOSTS: '10.0.0.5:8443,10.0.0.6' });
    expect(urlProblem('https://10.0.0.5:8443/hook', policy)).toBeUndefined();
    expect(urlProblem('http://10.0.0.5:8443/hook', policy)).toBeUndefined();
    expect(urlProblem('https://10.0.0.5/hook', policy)).toBe(REFUSED_NOT_PUBLIC);
    expect(urlProblem('https://10.0.0.5:9443/hook', policy)).toBe(REFUSED_NOT_PUBLIC);
    // A bare host is https's port, 443.
    expect(urlProblem('https://10.0.0.6/hook', policy)).toBeUndefined();
    expect(urlProblem('https://10.0.0.6:443/other/path', policy)).toBeUndefined();
    expect(urlProblem('https://10.0.0.6:8443/hook', policy)).toBe(REFUSED_NOT_PUBLIC);
    expect(urlProblem('http://10.0.0.6/hook', policy)).toBe(REFUSED_NOT_HTTPS);
    expect(urlProblem('https://[::1]/hook', policy)).toBe(REFUSED_NOT_PUBLIC);
    expect(urlProblem('https://hooks.example.com/hook', policy)).toBeUndefined();
    expect(urlProblem('ftp://hooks.example.com/hook', policy)).toBe('the URL must use http or https');
    // In development, anything http(s) goes.
    expect(urlProblem('http://10.0.0.5:1234/hook', destinationPolicy({ NODE_ENV: 'development' }))).toBeUndefined();
  });

  it('when a connection fails, then the text kept for tenants names its kind and code, never an address', () => {
    const failure = (message: string, code?: string) => Object.assign(new Error(message), code ? { code } : {});
    expect(publicReason(failure('connect ECONNREFUSED 10.0.0.7:443', 'ECONNREFUSED'))).toBe('the connection was refused (ECONNREFUSED)');
    expect(publicReason(failure('getaddrinfo ENOTFOUND db.internal', 'ENOTFOUND'))).toBe('the host name could not be resolved (ENOTFOUND)');
    expect(publicReason(failure('connect ETIMEDOUT 10.0.0.7:443', 'ETIMEDOUT'))).toBe('the destination could not be reached (ETIMEDOUT)');
    expect(publicReason(failure('socket hang up', 'ECONNRESET'))).toBe('the connection was closed before an answer came (ECONNRESET)');
    expect(publicReason(failure("Hostname/IP does not match certificate's altnames: IP: 10.0.0.7 is not in the cert's list: ", 'ERR_TLS_CERT_ALTNAME_INVALID'))).toBe(
      'the TLS connection failed (ERR_TLS_CERT_ALTNAME_INVALID)',
    );
    expect(publicReason(failure('something about 10.0.0.7'))).toBe('the request failed');
  });
});
