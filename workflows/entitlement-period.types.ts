/** The contract of `entitlementPeriodWorkflow`: its input and activities. */

export interface EntitlementPeriodInput {
  organisationId: string;
  entitlementId: string;
}

export interface EntitlementPeriodActivities {
  /** When the entitlement's current period ends (ISO instant); null once it is gone. */
  entitlementPeriodEnd(input: EntitlementPeriodInput): Promise<string | null>;
  /** The period starting at `periodStart` begun: its reset announced, once, whoever asks again. */
  announceEntitlementReset(input: EntitlementPeriodInput & { periodStart: string }): Promise<void>;
}
