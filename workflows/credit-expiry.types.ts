/** The contract of `creditExpiryWorkflow`: its input and its activity. */

export interface CreditExpiryInput {
  organisationId: string;
  lotId: string;
  /** ISO instant. */
  expiresAt: string;
}

export interface CreditActivities {
  /** What is left of the lot leaves the balance, if it is due by `asOf` (the expiry the timer waited for). */
  expireCreditLot(input: { organisationId: string; lotId: string; asOf: string }): Promise<{ expired: string }>;
}
