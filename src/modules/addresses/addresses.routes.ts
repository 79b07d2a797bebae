import { AppError } from '../../domain/errors';
import { defineRoute, requires, type Route } from '../../http/route';
import { deletedSchema, idParam, deleted } from '../../http/schemas';
import type { AppDeps } from '../../deps';
import { createAddressRepository } from './addresses.repository';
import { addressBody, addressSchema, entityAddressParams } from './addresses.schemas';
import { createAddressService } from './addresses.service';

export function addressRoutes(deps: AppDeps): Route[] {
  const addresses = createAddressRepository(deps.db);
  const service = createAddressService(deps.db);

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
        if (!(await addresses.delete(auth.organisationId, params.id, params.addressId))) throw AppError.notFound('Address');
        return deleted(params.addressId);
      },
    }),
  ];
}
