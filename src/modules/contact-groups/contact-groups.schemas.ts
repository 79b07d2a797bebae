import { z } from 'zod';
import { pageQuery } from '../../http/paging';
import { emailAddress, timestamps, text, reference } from '../../http/schemas';

const contactBody = z.object({
  name: text(200),
  email: emailAddress,
});

export const createContactGroupBody = z.object({
  customerId: reference(),
  name: text(200),
  contacts: z.array(contactBody).min(1).max(100).describe('Who receives the invoices sent to this group'),
});

export type CreateContactGroupBody = z.output<typeof createContactGroupBody>;

export const contactGroupListQuery = pageQuery.extend({ customerId: reference().optional() });

const contactSchema = z.object({
  id: z.string(),
  name: z.string(),
  email: z.string(),
  ...timestamps,
});

export const contactGroupSchema = z.object({
  id: z.string(),
  customerId: z.string(),
  name: z.string(),
  contacts: z.array(contactSchema).describe('Ordered by name, then email'),
  ...timestamps,
});
