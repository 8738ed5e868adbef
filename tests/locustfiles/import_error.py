from locust import HttpUser, task  # noqa: F401, I001  (this file is about the import on line 3 failing)

import a_module_that_does_not_exist  # noqa: F401
