import { unsupportedNode } from './engine';

describe('unsupportedNode', () => {
  it('says in one line what to install on a Node.js older than 22', () => {
    expect(unsupportedNode('20.20.2')).toBe(
      'Node.js 20.20.2 is older than nestjs-payment-webhooks supports (>= 22): install Node.js 22 or 24 LTS (https://nodejs.org/en/download)',
    );
    expect(unsupportedNode('18.0.0')).toMatch(/^Node\.js 18\.0\.0 is older/);
  });

  it('says nothing on 22, 24 or later, nor on a version it cannot read', () => {
    for (const v of ['22.0.0', '22.12.1', '24.22.3', '26.1.0', 'not-a-version']) expect(unsupportedNode(v)).toBe(null);
  });
});
