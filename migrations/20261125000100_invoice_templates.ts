import type { Knex } from 'knex';

/**
 * Invoice templates: the branding of an organisation's invoice PDF (accent colour, footer, legal text and a
 * logo). The logo's bytes live in the row, so Postgres stays the one source of truth. An organisation has at
 * most one default template, the one its PDFs use.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('invoice_templates', (table) => {
    table.text('id').primary();
    table.text('organisation_id').notNullable().references('organisations.id').onDelete('CASCADE');
    table.text('name').notNullable();
    // #rrggbb, in lower case.
    table.text('accent_color').notNullable();
    table.text('footer_text');
    table.text('legal_text');
    table.boolean('is_default').notNullable().defaultTo(false);
    // A PNG or JPEG checked when it was uploaded; the other three describe it and are set with it.
    table.binary('logo');
    table.text('logo_content_type');
    table.integer('logo_size');
    table.text('logo_sha256');
    table.timestamps(true, true);
    table.unique(['organisation_id', 'name']);
    table.index(['organisation_id', 'created_at']);
  });
  await knex.raw("ALTER TABLE invoice_templates ADD CONSTRAINT invoice_templates_accent_color_check CHECK (accent_color ~ '^#[0-9a-f]{6}$')");
  await knex.raw(
    "ALTER TABLE invoice_templates ADD CONSTRAINT invoice_templates_logo_check CHECK ((logo IS NULL AND logo_content_type IS NULL AND logo_size IS NULL AND logo_sha256 IS NULL) OR (logo IS NOT NULL AND logo_content_type = 'image/png' AND logo_size = octet_length(logo) AND logo_sha256 IS NOT NULL))",
  );
  // Invoice PDFs use the organisation's default template: there is one or none.
  await knex.raw('CREATE UNIQUE INDEX invoice_templates_one_default ON invoice_templates (organisation_id) WHERE is_default');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('invoice_templates');
}
