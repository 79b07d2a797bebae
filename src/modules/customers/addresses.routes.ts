import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam, deleted } from '../../http/schemas';
import type { AppDeps } from '../../deps';
import { addressBody, addressSchema, entityAddressParams } from './addresses.schemas';

export function addressRoutes(deps: AppDeps): Route[] {
  const service = deps.services.addresses;

  return [
    defineRoute({
      method: 'post',
      path: '/entities/{id}/addresses',
      summary: 'Add an address to an entity',
      tag: 'Entities',
      access: requires('AddressService:createAddress'),
      params: idParam,
      body: addressBody,
      response: addressSchema,
      successStatus: 201,
      handler: async ({ params, body, auth }) => service.create(auth.organisationId, params.id, body),
    }),
    defineRoute({
      method: 'delete',
      path: '/entities/{id}/addresses/{addressId}',
      summary: 'Remove an address from an entity',
      tag: 'Entities',
      access: requires('AddressService:deleteAddress'),
      params: entityAddressParams,
      response: deletedSchema,
      handler: async ({ params, auth }) => {
        await service.delete(auth.organisationId, params.id, params.addressId);
        return deleted(params.addressId);
      },
    }),
  ];
}
