import fc from 'fast-check';
import { csvCell } from '../../src/modules/objects/object-export.service';

describe('csvCell', () => {
  it('when a cell would run as a formula, then it starts with a quote; a plain negative number stays a number', () => {
    expect(['=SUM(A1)', '+1', '-1+2', '@cmd', '-', '-1e5', '\tx'].map(csvCell)).toEqual(["'=SUM(A1)", "'+1", "'-1+2", "'@cmd", "'-", "'-1e5", "'\tx"]);
    expect(['-30.0000', '-30', '238.0000', '0'].map(csvCell)).toEqual(['-30.0000', '-30', '238.0000', '0']);
  });

  it('quotes a cell with a comma, a quote or a line break, doubling its quotes', () => {
    expect(csvCell('a,"b"\nc')).toBe('"a,""b""\nc"');
    fc.assert(fc.property(fc.string(), (text) => !/^[=+\-@\t\r]/.test(csvCell(text).replace(/^"/, '')) || csvCell(text).replace(/^"/, '').startsWith("'") || /^-\d+(\.\d+)?$/.test(text)));
  });
});
