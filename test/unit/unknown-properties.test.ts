import { z } from 'zod';
import { unknownProperties } from '../../src/http/unknown-properties';

const paths = (schema: z.ZodType, value: unknown) => unknownProperties(schema, value).map((path) => path.join('.'));

describe('the properties a body schema does not name', () => {
  const body = z
    .object({
      name: z.string(),
      address: z.object({ city: z.string() }).optional(),
      lines: z.array(z.object({ title: z.string() })),
      metadata: z.record(z.string(), z.unknown()).optional(),
      loose: z.looseObject({ a: z.number() }).optional(),
      kind: z.discriminatedUnion('type', [z.object({ type: z.literal('grant'), amount: z.number() }), z.object({ type: z.literal('void') })]).optional(),
    })
    .superRefine(() => undefined);

  it('when every property is named, or sits in a free-form part, then there is none', () => {
    expect(paths(body, { name: 'a', lines: [{ title: 't' }], metadata: { any: { thing: 1 } }, loose: { a: 1, b: { c: 2 } }, kind: { type: 'grant', amount: 1 } })).toEqual([]);
  });

  it('when unknown properties hold objects, scalars or sit deep in arrays and unions, then each is named by its path', () => {
    expect(
      paths(body, {
        name: 'a',
        foo: { nested: true },
        bar: 1,
        address: { city: 'Paris', zip: '75001' },
        lines: [{ title: 't' }, { title: 'u', extra: [] }],
        kind: { type: 'void', amount: 3 },
      }),
    ).toEqual(['foo', 'bar', 'address.zip', 'lines.1.extra', 'kind.amount']);
  });

  it('when a value is not an object where one is expected, then it is left to the schema to refuse', () => {
    expect(paths(body, { name: 'a', address: 'Paris', lines: 'none' })).toEqual([]);
  });
});

describe('strict objects and unions no option takes', () => {
  it('when an object is strict, then its unknown keys are found too', () => {
    expect(paths(z.object({ a: z.number() }).strict(), { a: 1, b: 2 })).toEqual(['b']);
  });

  it('when the discriminator is wrong, then a key that no object option names is unknown, and one that some option names is not', () => {
    const union = z.discriminatedUnion('type', [z.object({ type: z.literal('a'), x: z.number() }), z.object({ type: z.literal('b'), y: z.number() })]);
    expect(paths(union, { type: 'c', x: 1, foo: { a: 1 } })).toEqual(['foo']);
    expect(paths(z.union([z.string(), z.object({ x: z.number() })]), { x: 'no', foo: 1 })).toEqual(['foo']);
  });
});
