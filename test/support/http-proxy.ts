/** The proxy the e2e tests put in front of the service (tools/http-proxy.ts, also runnable alone). */
export { HttpProxy, type HttpProxyOptions } from '../../tools/http-proxy';
