import { optionalPackage } from './optional-package';

const notFound = (what: string) => Object.assign(new Error(`Cannot find module '${what}'\nRequire stack:\n- x.js`), { code: 'MODULE_NOT_FOUND' });

describe('optionalPackage', () => {
  it('the package, loaded once', () => {
    let loads = 0;
    const pkg = optionalPackage('square', () => ({ n: ++loads }));
    expect([pkg(), pkg()]).toEqual([{ n: 1 }, { n: 1 }]);
    expect(loads).toBe(1);
  });

  it('null when the package itself is not installed, looked for once', () => {
    let loads = 0;
    const pkg = optionalPackage('square', () => {
      loads++;
      throw notFound('square');
    });
    expect([pkg(), pkg(), loads]).toEqual([null, null, 1]);
  });

  it("a dependency of the package that is missing is thrown as it is: installing the package again would not fix it", () => {
    const pkg = optionalPackage('square', () => {
      throw notFound('form-data-encoder');
    });
    expect(() => pkg()).toThrow("Cannot find module 'form-data-encoder'");
  });
});
