import { deliveryError } from '../../src/modules/emails/emails.service';

/** Faults shaped as nodemailer gives them: a reply of the server carries its code, a connection fault its own. */
const fault = (message: string, fields: Record<string, unknown>) => Object.assign(new Error(message), fields);

describe('deliveryError: what tenants read of a failed delivery', () => {
  it("when the mail server replied, then its reply is kept", () => {
    expect(deliveryError(fault('Can\'t send mail - all recipients were rejected: 550 Mailbox unavailable', { code: 'EENVELOPE', responseCode: 550 }))).toBe(
      "Can't send mail - all recipients were rejected: 550 Mailbox unavailable",
    );
  });

  it("when the server could not be reached, then only that and the fault's code: never the operator's addresses", () => {
    const told = deliveryError(fault('connect ECONNREFUSED 10.0.3.7:587', { code: 'ESOCKET' }));
    expect(told).toBe('the mail server could not be reached (ESOCKET)');
    expect(deliveryError(fault('getaddrinfo ENOTFOUND smtp.internal.example', { code: 'EDNS' }))).not.toMatch(/internal|10\.0/);
    expect(deliveryError(new Error('Greeting never received at 10.0.3.7'))).toBe('the mail server could not be reached');
    expect(deliveryError('not an error')).toBe('the mail server could not be reached');
  });

  it('when a reply is longer than the column keeps, then it is cut to 1,000 characters without NUL', () => {
    expect(deliveryError(fault(`451 ${'x'.repeat(2000)}\u0000`, { responseCode: 451 }))).toHaveLength(1000);
  });
});
