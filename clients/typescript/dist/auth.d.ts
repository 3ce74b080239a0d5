import type { AuthAuthenticateParams } from './generated/types.js';
/** What `client_metadata` carries into `gateway.clients` and the presence events. */
export interface ClientMetadata {
    client_name?: string;
    client_version?: string;
    purpose?: string;
    [key: string]: unknown;
}
/** A token, or an HMAC client id and secret. */
export type Credentials = {
    token: string;
} | {
    hmac: {
        clientId: string;
        secret: string;
    };
};
/** A random UUID (v4), from `crypto.randomUUID` where it exists. */
export declare function randomId(): string;
/** HMAC-SHA256 of `message` under `secret`, hex. */
export declare function hmacSha256(secret: string, message: string): Promise<string>;
/** The params of one `auth.authenticate` (an HMAC signature is fresh on every call). */
export declare function authParams(creds: Credentials, metadata: ClientMetadata): Promise<AuthAuthenticateParams>;
