import { compactBankCode, isValidBic, isValidIban, printedIban } from '../../src/domain/bank-details';
import fc from 'fast-check';
import { ADDRESS_STYLES, addressLines, canonicalLocale, countryName, LOCALE_TAG_PATTERN, localeAmount, localeDate, localeNumber, localePrice, localeQuantity } from '../../src/domain/document-locale';
import { htmlToText } from '../../src/mail/html-text';

describe('numbers in a locale', () => {
  it('when an amount is written, then it has the locale separators and exactly the currency minor unit', () => {
    expect(localeAmount('105079', 'GBP', 'en-GB')).toBe('105,079.00');
    expect(localeAmount('105079', 'EUR', 'de-DE')).toBe('105.079,00');
    expect(localeAmount('1050', 'JPY', 'ja-JP')).toBe('1,050');
    expect(localeAmount('-1234.5', 'USD', 'en-US')).toBe('-1,234.50');
    expect(localeAmount('0.125', 'BHD', 'en-US')).toBe('0.125');
  });

  it('when an amount has 20 integer digits, then every digit is kept (no float on the way)', () => {
    expect(localeAmount('12345678901234567890.12', 'USD', 'en-US')).toBe('12,345,678,901,234,567,890.12');
  });

  it('when the locale writes characters the standard PDF fonts lack, then they become ones they have', () => {
    // French groups with a narrow no-break space, Swedish negatives with a minus sign.
    expect(localeAmount('-1234567.5', 'EUR', 'fr-FR')).toBe('-1\u00a0234\u00a0567,50');
    expect(localeAmount('-5', 'SEK', 'sv-SE')).toBe('-5,00');
    // Arabic digits become Latin ones.
    expect(localeNumber('1234.5', 'ar-EG', 0, 2)).toMatch(/^[0-9.,\u00a0\u066b\u066c]+$/);
  });

  it('when quantities and prices are written, then they keep their decimals (a price at least the currency minor unit)', () => {
    expect(localeQuantity('1500.5', 'de-DE')).toBe('1.500,5');
    expect(localeQuantity('2', 'en-GB')).toBe('2');
    expect(localePrice('49.5', 'EUR', 'de-DE')).toBe('49,50');
    expect(localePrice('0.0125', 'USD', 'en-US')).toBe('0.0125');
  });
});

describe('dates in a locale', () => {
  it('when a day is written, then it is in the locale numeric form', () => {
    expect(localeDate('2026-11-05', 'en-GB')).toBe('05/11/2026');
    expect(localeDate('2026-11-05', 'de-DE')).toBe('05.11.2026');
    expect(localeDate('2026-11-05', 'en-US')).toBe('11/05/2026');
    expect(localeDate('2026-11-05', 'ja-JP')).toBe('2026/11/05');
  });
});

describe('locale tags', () => {
  it('when a tag is known, then its canonical form is kept; otherwise it is refused', () => {
    expect(canonicalLocale('en-gb')).toBe('en-GB');
    expect(canonicalLocale('de-DE')).toBe('de-DE');
    expect(canonicalLocale('not a locale')).toBeUndefined();
    expect(canonicalLocale('zz')).toBeUndefined();
    expect(canonicalLocale('')).toBeUndefined();
    expect(canonicalLocale('fil-PH')).toBe('fil-PH');
    expect(canonicalLocale('zh-Hant-TW')).toBe('zh-Hant-TW');
    expect(canonicalLocale('es-419')).toBe('es-419');
  });

  it("when a tag matches the document's pattern, then the service takes it: the OpenAPI pattern never promises a tag the service refuses", () => {
    fc.assert(
      fc.property(fc.stringMatching(new RegExp(LOCALE_TAG_PATTERN)), (tag) => {
        expect({ tag, canonical: canonicalLocale(tag) }).toEqual({ tag, canonical: expect.any(String) });
      }),
      { numRuns: 2000 },
    );
  });
});

describe('addresses in the format of their country', () => {
  const street = { line1: '1 High Street', line2: 'Floor 2' };

  it('when the address is in the United Kingdom, then the town and the postcode are on lines of their own', () => {
    expect(addressLines({ ...street, city: 'London', postalCode: 'SW1A 2AA', country: 'GB' }, 'en-GB')).toEqual(['1 High Street', 'Floor 2', 'London', 'SW1A 2AA', 'United Kingdom']);
  });

  it('when the address is in Germany, then the postcode comes before the city', () => {
    expect(addressLines({ line1: 'Unter den Linden 1', city: 'Berlin', postalCode: '10117', country: 'DE' }, 'de-DE')).toEqual(['Unter den Linden 1', '10117 Berlin', 'Deutschland']);
  });

  it('when the address is in the United States, then it reads city, state ZIP', () => {
    expect(addressLines({ line1: '1 Main St', city: 'Springfield', state: 'IL', postalCode: '62701', country: 'US' }, 'en-US')).toEqual(['1 Main St', 'Springfield, IL 62701', 'United States']);
  });

  it('when the address is in Canada or Australia, then city, province and postcode share a line without commas', () => {
    expect(addressLines({ line1: '1 Rue', city: 'Ottawa', state: 'ON', postalCode: 'K1A 0B1', country: 'CA' }, 'en-US')).toEqual(['1 Rue', 'Ottawa ON K1A 0B1', 'Canada']);
    expect(ADDRESS_STYLES.AU).toBe('city-state-postcode');
  });

  it('when the country has no format of its own, then postcode and city share a line and the state follows', () => {
    expect(addressLines({ line1: 'Via Roma 1', city: 'Roma', state: 'RM', postalCode: '00144', country: 'IT' }, 'en-GB')).toEqual(['Via Roma 1', '00144 Roma', 'RM', 'Italy']);
  });

  it('when parts are missing, then no empty line or stray comma is left', () => {
    expect(addressLines({ line1: '1 Main St', line2: null, city: 'Springfield', state: null, postalCode: null, country: 'US' }, 'en-US')).toEqual(['1 Main St', 'Springfield', 'United States']);
  });

  it('when the locale writes country names in a script the PDF fonts lack, then the English name is used', () => {
    expect(countryName('DE', 'ja-JP')).toBe('Germany');
    expect(countryName('GB', 'de-DE')).toBe('Vereinigtes Königreich');
  });
});

describe('IBAN and BIC', () => {
  it('when an IBAN check digits hold (mod 97), then it is valid, with or without spaces', () => {
    expect(isValidIban('GB33BUKB20201555555555')).toBe(true);
    expect(isValidIban('GB33 BUKB 2020 1555 5555 55')).toBe(true);
    expect(isValidIban('de89 3704 0044 0532 0130 00')).toBe(true);
  });

  it('when an IBAN has a wrong check digit, a changed digit or a wrong shape, then it is invalid', () => {
    expect(isValidIban('GB34BUKB20201555555555')).toBe(false);
    expect(isValidIban('GB33BUKB20201555555556')).toBe(false);
    expect(isValidIban('GB33')).toBe(false);
    expect(isValidIban('1233BUKB20201555555555')).toBe(false);
    expect(isValidIban('GB33BUKB2020155555555!')).toBe(false);
    expect(isValidIban(`GB33${'1'.repeat(31)}`)).toBe(false);
  });

  it('when an IBAN is printed, then it is in groups of four', () => {
    expect(printedIban('gb33bukb20201555555555')).toBe('GB33 BUKB 2020 1555 5555 55');
    expect(compactBankCode(' gb33 bukb ')).toBe('GB33BUKB');
  });

  it('when a BIC has 8 or 11 characters of the right kinds, then it is valid', () => {
    expect(isValidBic('BUKBGB22')).toBe(true);
    expect(isValidBic('deutdeff500')).toBe(true);
    expect(isValidBic('DEUT1EFF')).toBe(false);
    expect(isValidBic('BUKBGB2')).toBe(false);
    expect(isValidBic('BUKBGB22XX')).toBe(false);
  });
});

describe('the text of an HTML message', () => {
  it('when HTML is turned into text, then paragraphs, lines, links and entities read as in the HTML', () => {
    expect(htmlToText('<p>Hello Ann &amp; Bob,</p>\n<p>Invoice <strong>INV-1</strong>, due on 05/12/2026.</p><p>Pay <a href="https://pay.example/i?a=1&amp;b=2">here</a>.<br>Thanks &#163;&#x20AC;</p>')).toBe(
      'Hello Ann & Bob,\n\nInvoice INV-1, due on 05/12/2026.\n\nPay here (https://pay.example/i?a=1&b=2).\nThanks £€',
    );
  });

  it('when a link shows its own address, or a tag is left open, then nothing is doubled or lost', () => {
    expect(htmlToText('<a href="https://x.example">https://x.example</a> and 1 < 2')).toBe('https://x.example and 1 < 2');
  });
});
