import type { Knex } from 'knex';
import { newId } from '../../db/ids';
import { preparedAs } from '../../db/knex';
import { paginate, type Page, type PageQuery } from '../../http/paging';
import { customersIn } from '../customers';
import type { UsagePeriod } from '../../domain/entitlements';
import { counterDaysSince, type CounterDay, type MetadataFilter } from '../usage';

export interface FeatureRow {
  id: string;
  organisation_id: string;
  key: string;
  name: string;
  meter_id: string | null;
  filters: MetadataFilter[];
  created_at: Date;
  updated_at: Date;
}

export type EntitlementType = 'boolean' | 'static' | 'metered';

export interface EntitlementRow {
  id: string;
  organisation_id: string;
  customer_id: string;
  feature_id: string;
  type: EntitlementType;
  config: Record<string, unknown> | null;
  usage_limit: string | null;
  usage_period: 'day' | 'week' | 'month' | 'year' | null;
  anchor: Date | null;
  is_soft_limit: boolean;
  time_zone: string | null;
  counter_id: string | null;
  period_end: Date | null;
  exhausted_period_start: Date | null;
  created_at: Date;
}

/**
 * An entitlement with its feature's key, meter and filters, and (read with it, for the check) its grants
 * and its usage counter's days.
 */
export interface EntitlementWithFeature extends EntitlementRow {
  feature_key: string;
  meter_id: string | null;
  filters: MetadataFilter[];
  grants?: GrantRow[];
  counter_days?: CounterDay[];
}

export interface GrantRow {
  id: string;
  organisation_id: string;
  entitlement_id: string;
  amount: string;
  effective_at: Date;
  expires_at: Date | null;
  priority: number;
  created_at: Date;
}

/**
 * How many days before an instant's UTC day the usage period holding it may start, with room to spare: a
 * period's length less one, and one more for a counter's day, which is of its own zone and so at most one
 * off the UTC day.
 */
const PERIOD_REACH_DAYS: Record<UsagePeriod, number> = { day: 3, week: 9, month: 33, year: 370 };
const REACH_OF_PERIOD = `CASE entitlements.usage_period ${Object.entries(PERIOD_REACH_DAYS)
  .map(([period, days]) => `WHEN '${period}' THEN ${days}`)
  .join(' ')} ELSE ${PERIOD_REACH_DAYS.year} END`;

/** Named rather than `entitlements.*`: the check's prepared plan must not change with a column added later. */
const ENTITLEMENT_COLUMNS: ReadonlyArray<keyof EntitlementRow> = [
  'id',
  'organisation_id',
  'customer_id',
  'feature_id',
  'type',
  'config',
  'usage_limit',
  'usage_period',
  'anchor',
  'is_soft_limit',
  'time_zone',
  'counter_id',
  'period_end',
  'exhausted_period_start',
  'created_at',
];
const WITH_FEATURE = [...ENTITLEMENT_COLUMNS.map((column) => `entitlements.${column}`), 'features.key as feature_key', 'features.meter_id', 'features.filters'];
const CHECK_STATEMENT = 'entitlement-check';

export function createEntitlementRepository(db: Knex) {
  const withFeature = () => db('entitlements').join('features', 'features.id', 'entitlements.feature_id').select<EntitlementWithFeature[]>(WITH_FEATURE);
  return {
    async insertFeature(organisationId: string, fields: Pick<FeatureRow, 'key' | 'name' | 'meter_id' | 'filters'>): Promise<FeatureRow> {
      const [row] = await db<FeatureRow>('features')
        .insert({ id: newId('fea'), organisation_id: organisationId, ...fields, filters: JSON.stringify(fields.filters) as unknown as MetadataFilter[] })
        .returning('*');
      return row!;
    },

    async findFeature(organisationId: string, id: string, lock?: 'update'): Promise<FeatureRow | undefined> {
      const query = db<FeatureRow>('features').where({ organisation_id: organisationId, id });
      return lock ? query.forUpdate().first() : query.first();
    },

    async findFeatureByKey(organisationId: string, key: string, lock?: 'share'): Promise<FeatureRow | undefined> {
      const query = db<FeatureRow>('features').where({ organisation_id: organisationId, key });
      return lock ? query.forShare().first() : query.first();
    },

    async listFeatures(organisationId: string, paging: PageQuery): Promise<Page<FeatureRow>> {
      return paginate<FeatureRow, FeatureRow>(db('features').where({ organisation_id: organisationId }), paging, { searchColumns: ['key', 'name'], map: (row) => row });
    },

    async updateFeature(id: string, changes: Partial<Pick<FeatureRow, 'name' | 'meter_id' | 'filters'>>): Promise<FeatureRow> {
      const stored = changes.filters === undefined ? changes : { ...changes, filters: JSON.stringify(changes.filters) as unknown as MetadataFilter[] };
      const [row] = await db<FeatureRow>('features').where({ id }).update({ ...stored, updated_at: db.fn.now() as unknown as Date }).returning('*');
      return row!;
    },

    async deleteFeature(id: string): Promise<void> {
      await db('features').where({ id }).delete();
    },

    async countEntitlementsOfFeature(featureId: string): Promise<number> {
      const [row] = await db('entitlements').where({ feature_id: featureId }).count<{ count: string }[]>({ count: '*' });
      return Number(row?.count ?? 0);
    },

    /** The new row; undefined when the customer already has an entitlement to the feature (one made at the same moment included). */
    async insertEntitlement(row: Omit<EntitlementRow, 'id' | 'created_at' | 'exhausted_period_start'>): Promise<EntitlementRow | undefined> {
      const [inserted] = await db<EntitlementRow>('entitlements')
        .insert({ id: newId('etl'), ...row, config: row.config === null ? null : (JSON.stringify(row.config) as unknown as Record<string, unknown>) })
        .onConflict(['customer_id', 'feature_id'])
        .ignore()
        .returning('*');
      return inserted;
    },

    async findEntitlement(organisationId: string, customerId: string, featureKey: string, lock?: 'update'): Promise<EntitlementWithFeature | undefined> {
      const query = withFeature().where({ 'entitlements.organisation_id': organisationId, 'entitlements.customer_id': customerId, 'features.key': featureKey });
      return lock ? query.forUpdate('entitlements').first() : query.first();
    },

    /**
     * What the check reads, in one statement: the entitlement of a live customer, its grants, and its usage
     * counter's days that the periods holding `at` or a grant's start may span (`PERIOD_REACH_DAYS` before
     * the earlier of `at`'s UTC day and the first grant's: a month's entitlement reads a month of days, not
     * a year). The check is the API's most frequent read, so it is a named prepared statement: each
     * connection parses and plans it once. Its text never changes, and its columns are named
     * (`WITH_FEATURE`).
     */
    async findEntitlementWithGrants(organisationId: string, customerId: string, featureKey: string, at: Date): Promise<EntitlementWithFeature | undefined> {
      const firstDay = db.raw(
        `least(?::date, (SELECT (min(g.effective_at) AT TIME ZONE 'UTC')::date FROM entitlement_grants g WHERE g.entitlement_id = entitlements.id)) - ${REACH_OF_PERIOD}`,
        [at.toISOString().slice(0, 10)],
      );
      const row = await withFeature()
        .select(
          db.raw(`(SELECT coalesce(json_agg(json_build_object('id', g.id, 'organisation_id', g.organisation_id, 'entitlement_id', g.entitlement_id, 'amount', g.amount::text,
                     'effective_at', g.effective_at, 'expires_at', g.expires_at, 'priority', g.priority, 'created_at', g.created_at) ORDER BY g.effective_at, g.id), '[]'::json)
                   FROM entitlement_grants g WHERE g.entitlement_id = entitlements.id) AS grants`),
          db.raw('? AS counter_days', [counterDaysSince(db, 'entitlements.counter_id', firstDay)]),
        )
        .where({ 'entitlements.organisation_id': organisationId, 'entitlements.customer_id': customerId, 'features.key': featureKey })
        .whereIn('entitlements.customer_id', customersIn(db).liveIds().where({ id: customerId }))
        .first()
        .options(preparedAs(db, CHECK_STATEMENT));
      if (!row) return undefined;
      // Read as JSON: amounts and instants come as text (an amount as a JSON number would lose digits).
      const grants = (row.grants as unknown as Array<Omit<GrantRow, 'effective_at' | 'expires_at' | 'created_at'> & { effective_at: string; expires_at: string | null; created_at: string }>).map((grant) => ({
        ...grant,
        effective_at: new Date(grant.effective_at),
        expires_at: grant.expires_at === null ? null : new Date(grant.expires_at),
        created_at: new Date(grant.created_at),
      }));
      return { ...row, grants };
    },

    async findEntitlementById(id: string): Promise<EntitlementWithFeature | undefined> {
      return withFeature().where('entitlements.id', id).first();
    },

    async listEntitlements(organisationId: string, customerId: string, paging: PageQuery): Promise<Page<EntitlementWithFeature>> {
      return paginate<EntitlementWithFeature, EntitlementWithFeature>(withFeature().where({ 'entitlements.organisation_id': organisationId, 'entitlements.customer_id': customerId }), paging, {
        searchColumns: [],
        orderBy: [
          { column: 'features.key', order: 'asc' },
          { column: 'entitlements.id', order: 'asc' },
        ],
        map: (row) => row,
      });
    },

    /** The metered entitlements of the customers whose feature counts a meter of one of the metrics. */
    async meteredOfCustomers(organisationId: string, customerIds: readonly string[], metrics: readonly string[]): Promise<EntitlementWithFeature[]> {
      if (customerIds.length === 0 || metrics.length === 0) return [];
      return withFeature()
        .join('meters', 'meters.id', 'features.meter_id')
        .where({ 'entitlements.organisation_id': organisationId, 'entitlements.type': 'metered' })
        .whereIn('entitlements.customer_id', [...customerIds])
        .whereIn('meters.metric', [...metrics]);
    },

    async deleteEntitlement(id: string): Promise<void> {
      await db('entitlements').where({ id }).delete();
    },

    /** Records the period now announced; answers whether this call moved it (a repeat finds it moved). */
    async advancePeriod(id: string, from: Date | null, to: Date): Promise<boolean> {
      const query = db('entitlements').where({ id });
      if (from === null) query.whereNull('period_end');
      else query.where('period_end', from);
      return (await query.update({ period_end: to })) > 0;
    },

    /** Marks the period's exhaustion announced; answers whether this call marked it. */
    async markExhausted(id: string, periodStart: Date): Promise<boolean> {
      const updated = await db('entitlements')
        .where({ id })
        .where((where) => where.whereNull('exhausted_period_start').orWhere('exhausted_period_start', '<', periodStart))
        .update({ exhausted_period_start: periodStart });
      return updated > 0;
    },

    async insertGrant(row: Omit<GrantRow, 'id' | 'created_at'>): Promise<GrantRow> {
      const [inserted] = await db<GrantRow>('entitlement_grants').insert({ id: newId('egr'), ...row }).returning('*');
      return inserted!;
    },

    /** Every grant of each entitlement. */
    async grantsOf(entitlementIds: readonly string[]): Promise<GrantRow[]> {
      if (entitlementIds.length === 0) return [];
      return db<GrantRow>('entitlement_grants').whereIn('entitlement_id', [...entitlementIds]).orderBy([{ column: 'effective_at' }, { column: 'id' }]);
    },

    async listGrants(entitlementId: string, paging: PageQuery): Promise<Page<GrantRow>> {
      return paginate<GrantRow, GrantRow>(db('entitlement_grants').where({ entitlement_id: entitlementId }), paging, { searchColumns: [], map: (row) => row });
    },
  };
}

export type EntitlementRepository = ReturnType<typeof createEntitlementRepository>;
