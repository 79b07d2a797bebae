import { spawn, type ChildProcess } from 'node:child_process';
import Stripe from 'stripe';
import { freePort } from '../../../src/temporal/dev-server';

export interface LocalStripe {
  /** e.g. http://127.0.0.1:8420, what STRIPE_API_BASE takes. */
  url: string;
  close: () => Promise<void>;
}

/**
 * localstripe (PyPI, pinned in test/requirements.txt): a stateful fake of Stripe's API, a real HTTP server
 * that the official `stripe` client talks to. Started from scratch; its state lives as long as it does.
 * The suite starts one (global-setup.ts) and hands its URL to every API and worker as STRIPE_API_BASE.
 */
export async function startLocalStripe(): Promise<LocalStripe> {
  const port = await freePort();
  const child: ChildProcess = spawn('python3', ['-m', 'localstripe', '--port', String(port), '--from-scratch'], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`localstripe exited with code ${child.exitCode}: pip install -r test/requirements.txt`);
    try {
      const res = await fetch(`${url}/v1/customers`, { headers: { authorization: 'Bearer sk_test_ready' } });
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('localstripe did not start within 30 s');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    url,
    close: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** The official client, aimed at the fake with the organisation's key. */
export function stripeClientOf(fake: LocalStripe, secretKey: string): Stripe {
  const base = new URL(fake.url);
  return new Stripe(secretKey, { host: base.hostname, port: base.port, protocol: 'http', maxNetworkRetries: 0 });
}

/** Puts a card on file at the fake and makes it the customer's default: how a customer's card changes at Stripe. */
export async function useCard(stripe: Stripe, stripeCustomerId: string, cardNumber: string): Promise<void> {
  const method = await stripe.paymentMethods.create({ type: 'card', card: { number: cardNumber, exp_month: 12, exp_year: 2034, cvc: '123' } });
  await stripe.paymentMethods.attach(method.id, { customer: stripeCustomerId });
  await stripe.customers.update(stripeCustomerId, { invoice_settings: { default_payment_method: method.id } });
}

/** The suite's fake, started by global-setup.ts (STRIPE_API_BASE). */
export function suiteStripe(): LocalStripe {
  const url = process.env.STRIPE_API_BASE;
  if (!url) throw new Error('STRIPE_API_BASE is not set: the suite starts localstripe in global-setup.ts');
  return { url, close: async () => undefined };
}
